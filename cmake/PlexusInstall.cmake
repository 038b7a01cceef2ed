# placeholder: install rules being written
